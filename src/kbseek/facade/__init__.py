"""The parts behind :class:`~kbseek.kb.KnowledgeBase`: each holds one concern of serving a knowledge base.

The facade's public face is ``KnowledgeBase`` (``kbseek/kb.py``) and ``Library`` (``kbseek/library.py``);
these modules are what they delegate to. Surfaces never import them: they go through the facade.
"""
