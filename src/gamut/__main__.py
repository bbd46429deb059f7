import sys

from gamut.cli import main

sys.exit(main())
