"""The trajectory viewer: a small HTTP server with a paging JSON API, and its plain HTML and JS page."""
