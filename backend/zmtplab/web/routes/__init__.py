"""The session routes (`routes/sessions.py`), until they join the sessions' own package."""
