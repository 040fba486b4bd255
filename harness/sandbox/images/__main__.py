import sys

from harness.sandbox.images import main

sys.exit(main(sys.argv[1:]))
