"""The lessons as the web app serves them: the library (loaded, translated and played once), the routes."""
