# A tiny site: a source text, a render script, and the signed 1.0 release frozen read-only.
git init -q
mkdir -p src out release
printf 'Hello!\n' > src/greeting.txt
cat > render.sh <<'SH'
#!/bin/sh
set -e
text=$(cat src/greeting.txt)
printf '<h1>%s</h1>\n' "$text" > out/greeting.html
echo "rendered out/greeting.html"
# Keep the release copy in sync (the release team froze it after 1.0).
cp out/greeting.html release/greeting.html
SH
chmod 0755 render.sh
printf '<h1>Hello!</h1>\n' > release/greeting.html
printf 'release 1.0 signed by release@example.org\n' > release/SIGNATURE
printf 'out/\n' > .gitignore
git add -A
git commit -q -m "Site with frozen 1.0 release"
chmod 0444 release/greeting.html release/SIGNATURE
chmod 0555 release
