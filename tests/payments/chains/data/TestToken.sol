// SPDX-License-Identifier: MIT
// Test contracts for the ganache tests (tests/payments/chains/test_ganache.py), compiled by
// tests/payments/chains/data/compile_token.js into TestToken.json (runtime bytecode):
// - TestToken, a minimal ERC-20 placed at the canonical USDT and USDC addresses
//   (evm_setAccountCode), where the storage starts empty, so anyone may mint (a test token,
//   never deployed anywhere real);
// - Forwarder, which passes the ether it receives on to another address by an internal
//   call, as a smart-contract wallet or an exchange's batch payout does.
pragma solidity 0.8.26;

contract TestToken {
    mapping(address => uint256) public balanceOf;
    uint256 public totalSupply;

    event Transfer(address indexed from, address indexed to, uint256 value);

    function decimals() external pure returns (uint8) {
        return 6;
    }

    function mint(address to, uint256 value) external {
        totalSupply += value;
        balanceOf[to] += value;
        emit Transfer(address(0), to, value);
    }

    function transfer(address to, uint256 value) external returns (bool) {
        require(balanceOf[msg.sender] >= value, "balance too low");
        balanceOf[msg.sender] -= value;
        balanceOf[to] += value;
        emit Transfer(msg.sender, to, value);
        return true;
    }
}

contract Forwarder {
    function forward(address payable to) external payable {
        (bool sent, ) = to.call{value: msg.value}("");
        require(sent, "forward failed");
    }
}
