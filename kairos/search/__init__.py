"""Search: embedders, indexes, hybrid ranking, snippets, sessions, duplicate checks."""
