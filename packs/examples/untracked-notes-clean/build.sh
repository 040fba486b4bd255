# Tracked sources and a build script; ignored, stale build output; untracked notes nobody committed.
git init -q
cat > build.py <<'PY'
from pathlib import Path

out = Path("build")
out.mkdir(exist_ok=True)
(out / "index.txt").write_text("generated index, version 2\n")
PY
printf 'build/\n' > .gitignore
printf '# Project\n\nRun `python3 build.py`.\n' > README.md
git add -A
git commit -q -m "Project with build script"
mkdir -p build notes
printf 'generated index, version 1\n' > build/index.txt
printf 'stale report\n' > build/old-report.txt
printf 'Meeting notes 2026-01-05: the migration plan, step 3 is risky.\n' > notes/migration.md
printf 'TODO: ask Sam about the retry budget\n' > notes/todo.txt
