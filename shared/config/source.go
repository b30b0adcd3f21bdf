package config

import (
	"fmt"
	"strconv"
)

// SourceKind is where a configuration value came from.
type SourceKind string

// Source kinds, from lowest to highest precedence.
const (
	SourceDefault SourceKind = "default"
	SourceUser    SourceKind = "user file"
	SourceProject SourceKind = "project file"
	SourceEnv     SourceKind = "environment"
)

// Source is where one configuration value came from.
type Source struct {
	Kind SourceKind
	// File and Line locate the value for SourceUser and SourceProject
	// (Line is 0 when unknown).
	File string
	Line int
	// Env names the environment variable for SourceEnv.
	Env string
}

// String describes the source for a person: "default",
// "/home/u/.scv/config.toml:7" or "environment (SCV_MODEL)".
func (s Source) String() string {
	switch s.Kind {
	case SourceUser, SourceProject:
		return location(s.File, s.Line)
	case SourceEnv:
		return fmt.Sprintf("environment (%s)", s.Env)
	case "":
		return string(SourceDefault)
	default:
		return string(s.Kind)
	}
}

func location(file string, line int) string {
	if line > 0 {
		return file + ":" + strconv.Itoa(line)
	}
	return file
}
