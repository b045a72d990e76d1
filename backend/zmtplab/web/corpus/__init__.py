"""Corpus runs: the Spark pipeline over uploaded captures, its report and tables, the routes."""
