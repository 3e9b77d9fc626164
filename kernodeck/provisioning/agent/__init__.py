"""The host agent: one standard-library file the ssh driver copies to nodes."""
