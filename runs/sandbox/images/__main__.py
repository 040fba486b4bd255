import sys

from runs.sandbox.images import main

sys.exit(main(sys.argv[1:]))
