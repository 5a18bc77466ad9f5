"""pi-host plugin pi-guard (being built)."""
