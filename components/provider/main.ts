// Entry point of the provider plugin process: the engine starts it with its address as argument.
import { main } from "@pulumi/pulumi/provider";
import { KubeProxyModeProvider } from "./provider.js";

void main(new KubeProxyModeProvider(), process.argv.slice(2));
