"""Runnable hydrolite example programs (each is also exercised by the tests)."""
