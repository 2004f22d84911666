"""acme-kernels: an example third-party NBX plugin (see docs/plugins.md)."""
