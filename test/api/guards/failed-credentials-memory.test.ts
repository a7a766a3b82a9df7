import { failedCredentialsSuite } from './failed-credentials.suite';

failedCredentialsSuite('memory');
