"""python -m flashc build-library DIR [--variants ...]: see library.py."""
import sys

from .library import main

sys.exit(main())
