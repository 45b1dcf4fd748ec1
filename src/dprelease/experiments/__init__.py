"""Reproductions of the papers' experiments; each writes CSV + PNG (``dprelease experiment KIND``)."""
