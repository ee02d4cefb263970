package sluicehttp

// GlobMatch exposes the path pattern matcher.
var GlobMatch = globMatch
