"""The analytics store nothing of their own: evaluator scores, computed or imported, are in assist.models."""
