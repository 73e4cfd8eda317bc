//go:build race

package mcm

const raceOn = true
