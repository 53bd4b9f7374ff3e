CREATE INDEX orders_created ON orders (created_at);
