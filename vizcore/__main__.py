import sys

from vizcore.cli import main

sys.exit(main())
