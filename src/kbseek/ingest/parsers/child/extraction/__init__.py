"""The format readers of the extraction child (``_extract_child.py``); one module per format."""
