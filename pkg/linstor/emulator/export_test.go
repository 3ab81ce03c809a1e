package emulator

// EventBuffer is eventBuffer, for the tests of a subscriber that falls behind.
const EventBuffer = eventBuffer
