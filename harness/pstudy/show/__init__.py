"""Showing results: figures, the terminal table and chart, the HTML page and its template."""
