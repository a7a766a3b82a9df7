import { failedCredentialsSuite } from './failed-credentials.suite';

failedCredentialsSuite('redis');
