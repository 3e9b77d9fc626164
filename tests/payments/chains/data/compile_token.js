// Rebuilds TestToken.json from TestToken.sol with the solc npm package that
// scripts/test-tools.sh --solc installs into .tools:  node tests/payments/chains/data/compile_token.js
const fs = require("fs");
const path = require("path");
const solc = require(path.resolve(__dirname, "../../../../.tools/node_modules/solc"));

const source = fs.readFileSync(path.join(__dirname, "TestToken.sol"), "utf8");
const input = {
  language: "Solidity",
  sources: { "TestToken.sol": { content: source } },
  settings: {
    optimizer: { enabled: true, runs: 200 },
    evmVersion: "shanghai", // ganache 7.9.2 runs up to Shanghai
    outputSelection: { "*": { "*": ["evm.deployedBytecode.object", "abi"] } },
  },
};
const output = JSON.parse(solc.compile(JSON.stringify(input)));
for (const error of output.errors || []) {
  if (error.severity === "error") throw new Error(error.formattedMessage);
}
const contracts = output.contracts["TestToken.sol"];
const built = {
  compiler: "solc " + solc.version() + " (evmVersion shanghai, optimizer 200 runs)",
  source: "TestToken.sol",
  runtime_bytecode: {},
};
for (const name of ["TestToken", "Forwarder"]) {
  built.runtime_bytecode[name] = "0x" + contracts[name].evm.deployedBytecode.object;
}
fs.writeFileSync(path.join(__dirname, "TestToken.json"), JSON.stringify(built, null, 2) + "\n");
console.log(built.compiler);
