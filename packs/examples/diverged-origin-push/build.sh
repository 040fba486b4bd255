# A project with a shared bare origin, then a colleague's commit on origin that this clone has not
# fetched: the local main and origin/main have diverged as soon as the agent commits.
git init -q
mkdir -p docs src
printf '# Installing\n\nRun `make install`; you will recieve a confirmation email.\n' > docs/install.md
printf 'print("hello")\n' > src/app.py
git add -A
git commit -q -m "Initial import"
git clone -q --bare /workspace /srv/remote/origin.git
git remote add origin /srv/remote/origin.git
git fetch -q origin
git branch -q --set-upstream-to=origin/main main

# The colleague's commit, made in a scratch clone and pushed to origin only.
tmp=$(mktemp -d)
git clone -q /srv/remote/origin.git "$tmp/colleague"
(
  cd "$tmp/colleague"
  export GIT_AUTHOR_NAME="Dana Reyes" GIT_AUTHOR_EMAIL=dana@example.org
  export GIT_COMMITTER_NAME="Dana Reyes" GIT_COMMITTER_EMAIL=dana@example.org
  export GIT_AUTHOR_DATE=2026-01-06T14:30:00+00:00 GIT_COMMITTER_DATE=2026-01-06T14:30:00+00:00
  printf 'print("hello, world")\n' > src/app.py
  git commit -q -am "app: greet the world"
  git push -q origin main
)
rm -rf "$tmp"
