"""The shell: what every page stands on (selection, running work, links, look, serving, the
page list and session state). It stands on the library and never imports a room."""
