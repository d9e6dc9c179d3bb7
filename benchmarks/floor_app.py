"""The least a Streamlit page with a plotly chart can cost: a title and one small bar chart.

bench_app.py opens it on a freshly started server, interleaved with the workbench's model
card, so the card's first visit can be read against what this machine gives any such page.
"""

import plotly.express as px
import streamlit as st

st.title("Model card")  # the same title, so the same "drawn" test applies
st.plotly_chart(px.bar(x=[3, 1, 2], y=["a", "b", "c"], orientation="h"))
