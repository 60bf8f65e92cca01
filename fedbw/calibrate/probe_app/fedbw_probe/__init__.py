"""The probe app's Python package."""
