"""The embedded-PostgreSQL database engine (``ENGINE = "mmw.db"``); see ``mmw.db.base``."""
