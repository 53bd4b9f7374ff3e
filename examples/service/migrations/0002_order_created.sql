-- When the order was placed; existing orders get the time of the migration.
ALTER TABLE orders ADD COLUMN created_at timestamptz NOT NULL DEFAULT now();
