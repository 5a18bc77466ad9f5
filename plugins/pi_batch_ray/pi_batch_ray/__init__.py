"""pi-batch-ray."""
