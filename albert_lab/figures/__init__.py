"""Each analysis's plotly figures: plain functions of the analysis's frame (a module per page of the app)."""
