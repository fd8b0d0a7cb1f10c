"""The English site: every setting is in ``_ext/kbseek_site.py``, shared with ``ja/conf.py``."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))

from kbseek_site import settings

globals().update(settings("en"))
