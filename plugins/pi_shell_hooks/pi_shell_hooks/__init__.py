"""pi-host plugin pi-shell-hooks (being built)."""
