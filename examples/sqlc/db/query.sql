-- name: CreateProject :one
INSERT INTO projects (name) VALUES ($1) RETURNING id, name;

-- name: AddTask :one
INSERT INTO tasks (project_id, title) VALUES ($1, $2) RETURNING id, project_id, title, done;

-- name: CompleteTask :execrows
UPDATE tasks SET done = true WHERE id = $1;

-- name: ListTasks :many
SELECT t.id, t.title, t.done, p.name AS project
FROM tasks t JOIN projects p ON p.id = t.project_id
ORDER BY t.id;

-- name: ProjectReport :many
SELECT p.name,
       count(t.id)::bigint AS total,
       count(t.id) FILTER (WHERE t.done)::bigint AS done
FROM projects p LEFT JOIN tasks t ON t.project_id = p.id
GROUP BY p.name
ORDER BY p.name;
