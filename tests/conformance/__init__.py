"""Redis's own Tcl test suite run against Sluice, as a ratchet (``make conformance``)."""
