# A shop module, a draft with a debug print, and an executable pre-commit hook that rejects prints.
git init -q
mkdir -p shop
printf '' > shop/__init__.py
printf 'def count(items):\n    return len(items)\n' > shop/cart.py
cat > DRAFT.txt <<'TXT'
def total(items):
    print("DEBUG total", items)
    return sum(item["price"] for item in items)
TXT
printf '__pycache__/\nDRAFT.txt\n' > .gitignore
git add -A
git commit -q -m "Shop cart module"
cat > .git/hooks/pre-commit <<'SH'
#!/bin/sh
# Reject debug prints in staged Python files.
if git diff --cached -U0 -- '*.py' | grep -E '^\+.*print\(' >/dev/null; then
  echo "pre-commit: remove debug print() calls before committing" >&2
  exit 1
fi
SH
chmod 0755 .git/hooks/pre-commit
