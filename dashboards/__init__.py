"""Grafana dashboards and alert rules as code, Prometheus rules, and the Streamlit console."""
