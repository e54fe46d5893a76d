"""Crowd providers (MTurk, Prolific, private links) behind one interface (base.py); one module per provider.

Nothing outside this package imports boto3 or an HTTP client for crowd work.
"""
