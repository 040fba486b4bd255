sed -i 's/recieve/receive/' docs/install.md
git commit -q -am "docs: fix typo in install guide"
# origin moved on: integrate the colleague's commit, then push without force.
git pull -q --no-rebase --no-edit origin main
git push -q origin main
