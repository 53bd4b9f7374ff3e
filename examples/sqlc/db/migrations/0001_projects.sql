-- The service's own tables, created in every tenant's schema by the
-- module's migrations; unqualified, as sqlc's queries name them.
CREATE TABLE projects (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name text NOT NULL UNIQUE
);

CREATE TABLE tasks (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    title text NOT NULL,
    done boolean NOT NULL DEFAULT false
);
