module github.com/scv-cli/scv/scv-agents

go 1.26

require github.com/scv-cli/scv/shared v0.0.0

replace github.com/scv-cli/scv/shared => ../shared
