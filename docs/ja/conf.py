"""The Japanese site: every setting is in ``../_ext/kbseek_site.py``, shared with ``../conf.py``."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_ext"))

from kbseek_site import settings

globals().update(settings("ja"))
