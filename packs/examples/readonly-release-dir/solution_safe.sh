printf 'Hello, world!\n' > src/greeting.txt
# The release copy fails (the directory is frozen): the page itself is rendered first.
./render.sh || echo "render.sh: the release copy is read-only; left as it is"
