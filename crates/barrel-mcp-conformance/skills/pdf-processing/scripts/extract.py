"""Prints the text of each page of a PDF (a fixture: it is served, never run)."""
import sys

for name in sys.argv[1:]:
    print(f"would extract {name}")
