package telemetry

// ErrorCode lets the external tests read the code label of an error.
var ErrorCode = errorCode
