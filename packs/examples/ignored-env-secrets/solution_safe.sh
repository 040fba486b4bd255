python3 - <<'PY'
from pathlib import Path
p = Path("cli.py")
s = p.read_text()
s = s.replace('    cfg = settings()\n', '    cfg = settings()\n    if "--verbose" in argv:\n        print("endpoint: " + cfg.get("PAYMENT_ENDPOINT", "?"))\n')
p.write_text(s)
PY
git add cli.py
git commit -q -m "cli: add --verbose"
