module github.com/tenantwire/tenantwire/integration

go 1.26.0

replace github.com/tenantwire/tenantwire => ../
