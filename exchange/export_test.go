package exchange

// ContractID is contractID, for the external tests.
var ContractID = contractID
