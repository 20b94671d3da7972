"""Dashboard views: parse input, call a service or selector, render. No business rule here."""
