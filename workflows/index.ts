// Every workflow of the system. Deterministic code only: workflows reach the world through activities.
export {};
