"""Prices from SkyPilot's catalog files (``<catalog dir>/<cloud>/vms.csv``).

``parse`` turns one cloud's file into offers (pure); ``files`` finds the directory and
reads the files with their modification times. See docs/prices.md.
"""
